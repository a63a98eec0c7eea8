"""Document collections: files read into passages with their place, indexed for search."""
