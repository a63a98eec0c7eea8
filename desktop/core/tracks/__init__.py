"""The tracks a provider is put on: native tool calling (`native`), or calls described in
the prompt (`emulated`: the prompt, the parser and the streaming hold-back) and, where the
backend can constrain its output, asked again under constrained decoding (`constrained`).
`choice` picks one for a model."""
