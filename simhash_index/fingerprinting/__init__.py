"""Text to fingerprint: simhash over weighted features, a MinHash sketch, the Fingerprinter."""
