#pragma once
// The one place that knows which compiler is translating: host/device
// annotations and inlining hints are spelled here and nowhere else.

#if defined(__CUDACC__)
#define TANDEM_HOST_DEVICE __host__ __device__
#else
#define TANDEM_HOST_DEVICE
#endif

// Before a loop of a compile-time count in host-and-device code: nvcc
// unrolls it, so that arrays indexed by its counter stay in registers
// instead of the GPU's local memory.
#if defined(__CUDACC__)
#define TANDEM_DEVICE_UNROLL _Pragma("unroll")
#else
#define TANDEM_DEVICE_UNROLL
#endif

// TANDEM_INLINE_LAMBDA goes after a lambda's parameter list. The fused
// kernels unroll over their classes with lambdas; GCC keeps a large one out
// of line, which sends every SIMD value of the group through the stack (it
// made a fused adjoint loop 2x slower than the hand-written one).
#if defined(__GNUC__) || defined(__clang__)
#define TANDEM_ALWAYS_INLINE inline __attribute__((always_inline))
#define TANDEM_INLINE_LAMBDA __attribute__((always_inline))
#else
#define TANDEM_ALWAYS_INLINE inline
#define TANDEM_INLINE_LAMBDA
#endif

// A rare path kept out of the loop that calls it, even a flattened one.
#if defined(__GNUC__) || defined(__clang__)
#define TANDEM_COLD inline __attribute__((noinline, cold))
#else
#define TANDEM_COLD inline
#endif

// On the function that runs one row of a fused group's loop: everything it
// calls is inlined into it, the SIMD math included. A fused group's body is
// large enough that GCC otherwise calls xsimd's sin, cos and exp out of line,
// spilling every register around each call and computing the range
// reduction that sin and cos share twice (the fused adjoint of
// sum(x*y + sin(x)*y - exp(y/2)*x) ran at 1.6x the hand-written loop; with
// this, at 1.0x).
//
// Sanitizer builds leave it out: instrumented and flattened, one fused test
// file took GCC over ten minutes.
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__SANITIZE_ADDRESS__)
#define TANDEM_FLATTEN __attribute__((flatten))
#else
#define TANDEM_FLATTEN
#endif

// Non-template functions that tandem::compiled compiles once (as spdlog's
// compiled mode does): a header declares them and, header-only, includes
// its `-inl.hpp` of definitions, where they are inline. Translation units
// that link the library (TANDEM_COMPILED_LIBRARY) see the declarations
// only, parsing and instantiating none of the bodies; the library's sources
// (TANDEM_BUILDING_COMPILED_LIBRARY) include each `-inl.hpp` once, where
// the functions are external.
#if defined(TANDEM_COMPILED_LIBRARY) || defined(TANDEM_BUILDING_COMPILED_LIBRARY)
#define TANDEM_HEADER_ONLY 0
#else
#define TANDEM_HEADER_ONLY 1
#endif
#if defined(TANDEM_BUILDING_COMPILED_LIBRARY)
#define TANDEM_LIBRARY_FUNCTION
#else
#define TANDEM_LIBRARY_FUNCTION inline
#endif
// On the in-class declaration of a virtual function that an `-inl.hpp`
// defines. Declared without `inline`, the first such function is its
// class's key function (Itanium C++ ABI), and the vtable goes wherever the
// key function is defined: header-only, that is every translation unit that
// includes the header, the virtual functions and all they call with it.
// Three such classes made an empty main that includes <tandem/tandem.hpp>
// compile 240 KB of code (9 of its 11.7 s of g++ time). Header-only they
// are inline, so the vtable follows the constructor's first use; the
// compiled library keeps its key function and the vtable in one place.
#if TANDEM_HEADER_ONLY
#define TANDEM_LIBRARY_VIRTUAL inline
#else
#define TANDEM_LIBRARY_VIRTUAL
#endif
