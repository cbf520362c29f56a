"""What the HTTP edges share: nodelay (an httpx client that sends each write at once), ratelimit (GCRA
buckets in Redis shared by every api process), gateway_auth (the header naming whom the gateway acts for)
and fetch (a URL fetched without reaching inside the house: every redirect hop's address judged, the body
cut at a byte cap)."""
