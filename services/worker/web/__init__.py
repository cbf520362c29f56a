"""Reading the web for the agent: safe fetches, readable text, search backends."""
