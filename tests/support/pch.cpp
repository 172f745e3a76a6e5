// The translation unit that builds the test binaries' precompiled header
// (support/check.hpp: doctest and the umbrella header).
