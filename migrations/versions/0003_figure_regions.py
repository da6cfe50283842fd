"""figure regions without their captions, and the words inside table grids

Revision ID: 0003
Revises: 0002
"""
from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('figures', schema=None) as batch_op:
        batch_op.add_column(sa.Column('region_bbox', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('region_text', sa.Text(), nullable=False, server_default=''))


def downgrade() -> None:
    with op.batch_alter_table('figures', schema=None) as batch_op:
        batch_op.drop_column('region_text')
        batch_op.drop_column('region_bbox')
