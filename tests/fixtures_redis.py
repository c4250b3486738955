"""Redis test fixtures: owned by the Redis-backend work."""
