"""Session stores (SQLite, memory, PostgreSQL) and what lives in them."""
