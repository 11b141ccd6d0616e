"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-21 04:30:53.415933
"""
from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('hypothesis_state',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('confidence', sa.Float(), nullable=True),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_hypothesis_state'))
    )
    op.create_table('note',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('hypothesis_id', sa.String(length=32), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('author', sa.String(length=128), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_note'))
    )
    with op.batch_alter_table('note', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_note_hypothesis_id'), ['hypothesis_id'], unique=False)

    op.create_table('test_run',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('hypothesis_id', sa.String(length=32), nullable=False),
    sa.Column('experiment', sa.String(length=256), nullable=False),
    sa.Column('arms', sa.JSON(), nullable=False),
    sa.Column('seeds', sa.JSON(), nullable=False),
    sa.Column('flags', sa.JSON(), nullable=True),
    sa.Column('config_hash', sa.String(length=64), nullable=False),
    sa.Column('mlflow_parent_run_id', sa.String(length=64), nullable=True),
    sa.Column('mlflow_run_ids', sa.JSON(), nullable=True),
    sa.Column('tracking_uri', sa.Text(), nullable=True),
    sa.Column('pid', sa.Integer(), nullable=False),
    sa.Column('pid_start', sa.String(length=32), nullable=True),
    sa.Column('host', sa.String(length=255), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('previous_status', sa.String(length=16), nullable=False),
    sa.Column('verdict', sa.String(length=16), nullable=True),
    sa.Column('confidence', sa.Float(), nullable=True),
    sa.Column('summary', sa.Text(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('mlflow_closed', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_test_run'))
    )
    with op.batch_alter_table('test_run', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_test_run_hypothesis_id'), ['hypothesis_id'], unique=False)
        batch_op.create_index('ix_test_run_state_host', ['state', 'host'], unique=False)

    op.create_table('status_change',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('hypothesis_id', sa.String(length=32), nullable=False),
    sa.Column('from_status', sa.String(length=16), nullable=False),
    sa.Column('to_status', sa.String(length=16), nullable=False),
    sa.Column('confidence', sa.Float(), nullable=True),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('evidence', sa.JSON(), nullable=True),
    sa.Column('actor', sa.String(length=128), nullable=False),
    sa.Column('test_run_id', sa.String(length=32), nullable=True),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['hypothesis_id'], ['hypothesis_state.id'], name=op.f('fk_status_change_hypothesis_id_hypothesis_state'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['test_run_id'], ['test_run.id'], name=op.f('fk_status_change_test_run_id_test_run'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_status_change'))
    )
    with op.batch_alter_table('status_change', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_status_change_hypothesis_id'), ['hypothesis_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('status_change', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_status_change_hypothesis_id'))

    op.drop_table('status_change')
    with op.batch_alter_table('test_run', schema=None) as batch_op:
        batch_op.drop_index('ix_test_run_state_host')
        batch_op.drop_index(batch_op.f('ix_test_run_hypothesis_id'))

    op.drop_table('test_run')
    with op.batch_alter_table('note', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_note_hypothesis_id'))

    op.drop_table('note')
    op.drop_table('hypothesis_state')
