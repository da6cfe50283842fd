"""why each failed job file failed, in a small stable vocabulary (app/ingest/failures.py): a fault of
the file's own bytes, which a retry repeats, told from a failure of the run that read it. Files
that failed before have none (shown as unknown, and retried as before).

Revision ID: 0008
Revises: 0007
"""
from alembic import op
import sqlalchemy as sa


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('job_files', schema=None) as batch_op:
        batch_op.add_column(sa.Column('error_kind', sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('job_files', schema=None) as batch_op:
        batch_op.drop_column('error_kind')
