"""figure types, crop quality, panels, source kind, dropped figures, delivery counts

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('figures', schema=None) as batch_op:
        batch_op.add_column(sa.Column('figure_type', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('figure_types', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('crop_quality', sa.String(length=16), nullable=False,
                                      server_default='ok'))
        batch_op.add_column(sa.Column('panels', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('text_source', sa.String(length=16), nullable=False,
                                      server_default='text_layer'))
        batch_op.create_index('ix_figures_figure_type', ['figure_type'], unique=False)
    with op.batch_alter_table('papers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('source_kind', sa.String(length=16), nullable=False,
                                      server_default='born_digital'))
        batch_op.add_column(sa.Column('dropped_figures', sa.JSON(), nullable=True))
    with op.batch_alter_table('job_files', schema=None) as batch_op:
        batch_op.add_column(sa.Column('deliveries', sa.Integer(), nullable=False,
                                      server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('job_files', schema=None) as batch_op:
        batch_op.drop_column('deliveries')
    with op.batch_alter_table('papers', schema=None) as batch_op:
        batch_op.drop_column('dropped_figures')
        batch_op.drop_column('source_kind')
    with op.batch_alter_table('figures', schema=None) as batch_op:
        batch_op.drop_index('ix_figures_figure_type')
        batch_op.drop_column('text_source')
        batch_op.drop_column('panels')
        batch_op.drop_column('crop_quality')
        batch_op.drop_column('figure_types')
        batch_op.drop_column('figure_type')
