"""The workspace layer: open editor buffers, atomic file writes, file watching, path confinement."""
