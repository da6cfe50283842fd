"""The web UI: static HTML, CSS and JavaScript that `figsearch serve` mounts at `/`.

A package only so that an installed figsearch carries these files (package data)."""
