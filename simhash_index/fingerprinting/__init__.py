"""Text to fingerprint: simhash over weighted features, a MinHash sketch, the Fingerprinter;
`bits` holds the helpers on 64-bit fingerprints (distance, signed storage, blocks)."""
