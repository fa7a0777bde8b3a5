"""The benchmark harness (``gpusvm bench``): every solver on every device against scikit-learn."""
