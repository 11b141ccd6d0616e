"""triage: rankings of the hypotheses on a run's own logs (`hypotrack triage`)

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 04:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('triage',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('source', sa.Text(), nullable=False),
    sa.Column('source_kind', sa.String(length=32), nullable=False),
    sa.Column('threshold', sa.Float(), nullable=False),
    sa.Column('ranking', sa.JSON(), nullable=False),
    sa.Column('report', sa.JSON(), nullable=True),
    sa.Column('actor', sa.String(length=128), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_triage'))
    )
    with op.batch_alter_table('triage', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_triage_at'), ['at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('triage', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_triage_at'))
    op.drop_table('triage')
