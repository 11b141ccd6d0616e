"""not_applicable is a status of its own; test runs keep a headline, a pool key and the series they decided on

Before this revision a hypothesis the run could not have (no KL term, one reward function) was stored
as `invalidated` with confidence 1.0 and a summary starting "invalidated: not applicable to this run".
Those verdicts, and the hypothesis states and history rows they wrote, become `not_applicable` with no
confidence; a downgrade writes them back the old way.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 20:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

OLD_PREFIX = 'invalidated: not applicable to this run'
NEW_PREFIX = 'not applicable to this run'


def upgrade() -> None:
    with op.batch_alter_table('test_run', schema=None) as batch_op:
        batch_op.add_column(sa.Column('headline', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('pool_key', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('series', sa.JSON(), nullable=True))
        batch_op.create_index('ix_test_run_pool_key', ['pool_key'], unique=False)
    _rename(OLD_PREFIX, NEW_PREFIX, 'invalidated', 'not_applicable', None)


def downgrade() -> None:
    _rename(NEW_PREFIX, OLD_PREFIX, 'not_applicable', 'invalidated', 1.0)
    with op.batch_alter_table('test_run', schema=None) as batch_op:
        batch_op.drop_index('ix_test_run_pool_key')
        batch_op.drop_column('series')
        batch_op.drop_column('pool_key')
        batch_op.drop_column('headline')


def _rename(old_prefix: str, new_prefix: str, old_status: str, new_status: str, confidence: float | None) -> None:
    conn = op.get_bind()
    params = {'old': old_status, 'new': new_status, 'conf': confidence, 'like': f'%{old_prefix}%',
              'old_prefix': old_prefix, 'new_prefix': new_prefix}
    conn.execute(sa.text(
        "UPDATE test_run SET verdict = :new, confidence = :conf, summary = REPLACE(summary, :old_prefix, :new_prefix) "
        "WHERE verdict = :old AND summary LIKE :like"), params)
    conn.execute(sa.text(
        "UPDATE status_change SET to_status = :new, confidence = :conf, reason = REPLACE(reason, :old_prefix, :new_prefix) "
        "WHERE to_status = :old AND reason LIKE :like"), params)
    # A hypothesis whose newest status change is such a verdict takes the new status.
    conn.execute(sa.text(
        "UPDATE hypothesis_state SET status = :new, confidence = :conf WHERE status = :old AND id IN ("
        " SELECT sc.hypothesis_id FROM status_change sc WHERE sc.id = ("
        "  SELECT MAX(id) FROM status_change WHERE hypothesis_id = sc.hypothesis_id) AND sc.to_status = :new)"),
        params)
    conn.execute(sa.text(
        "UPDATE status_change SET from_status = :new WHERE from_status = :old AND id IN ("
        " SELECT nxt.id FROM status_change nxt JOIN status_change prev ON prev.hypothesis_id = nxt.hypothesis_id"
        " AND prev.id = (SELECT MAX(id) FROM status_change WHERE hypothesis_id = nxt.hypothesis_id AND id < nxt.id)"
        " WHERE prev.to_status = :new)"), params)
