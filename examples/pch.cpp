// The translation unit that builds the examples' precompiled header.
