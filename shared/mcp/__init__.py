"""What every service knows of MCP servers: their health and tool lists as the worker last saw them (Redis)."""
