"""What runs inside every framework env: cells, the framework catalogue, backends, timing."""
