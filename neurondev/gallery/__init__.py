"""The gallery: device-placement patterns written as user code, and the catalogue that explains them."""
