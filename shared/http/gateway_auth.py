"""How the gateway's key names the user it acts for (read by the api, sent by the gateway)."""

ACT_AS_HEADER = "X-Act-As-User"
