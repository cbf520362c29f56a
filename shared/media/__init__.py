"""Media users send into chats: type by content (sniff), safe names (names), the workspace inbox (inbox),
bounded archive checks (archives), how a turn's text refers to a file (refs), image URLs fetched (remote)."""
