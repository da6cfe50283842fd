"""What a figure looks like: its type (line chart, heatmap, diagram...) and a visual embedding, from
small models the project trains itself on figures it renders (no downloaded weights)."""
