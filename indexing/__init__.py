"""ARCS indexing: tree-sitter chunking, embeddings, Qdrant store and retrieval."""
