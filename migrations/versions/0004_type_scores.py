"""every figure type's score, so queries naming a type find figures where it is not dominant

Revision ID: 0004
Revises: 0003
"""
from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('figures', schema=None) as batch_op:
        batch_op.add_column(sa.Column('type_scores', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('figures', schema=None) as batch_op:
        batch_op.drop_column('type_scores')
