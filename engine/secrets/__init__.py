"""The secret detector: what counts as a secret value (a token, a key, a password said in
words), found in any text before a model's write is committed and masked on every output."""
