"""The messaging gateway: chat platforms and signed webhooks in front of the api (an HTTP client of it only)."""
