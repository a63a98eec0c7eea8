"""Models to run: the curated catalogue, the Hugging Face Hub (search, files, downloads),
and the GGUF files in the data folder. Online only when the person asks."""
