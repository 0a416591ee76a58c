"""FX graphs and devices: target parsing and device slots (devices), device pins and their table (pins)."""
