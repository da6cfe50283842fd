"""the sha256 of each job file, known when the job is recorded: copies of one file within a job

Revision ID: 0006
Revises: 0005
"""
from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('job_files', schema=None) as batch_op:
        batch_op.add_column(sa.Column('sha256', sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('job_files', schema=None) as batch_op:
        batch_op.drop_column('sha256')
