"""what each job's collection steps came to (index state, version, error): a job is done when its
papers are searchable, not when its last file is read; the run of a job (one more per retry) and of
each of its files

Revision ID: 0007
Revises: 0006
"""
from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('index_state', sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column('index_version', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('index_error', sa.Text(), server_default='', nullable=False))
        batch_op.add_column(sa.Column('run', sa.Integer(), server_default='1', nullable=False))
    with op.batch_alter_table('job_files', schema=None) as batch_op:
        batch_op.add_column(sa.Column('run', sa.Integer(), server_default='1', nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('job_files', schema=None) as batch_op:
        batch_op.drop_column('run')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('run')
        batch_op.drop_column('index_error')
        batch_op.drop_column('index_version')
        batch_op.drop_column('index_state')
