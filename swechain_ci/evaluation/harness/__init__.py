"""Files copied into images: they run inside containers, on the stdlib and pytest only."""
