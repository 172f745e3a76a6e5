#pragma once
// The one place that knows which compiler is translating: host/device
// annotations and inlining hints are spelled here and nowhere else.

#if defined(__CUDACC__)
#define TANDEM_HOST_DEVICE __host__ __device__
#else
#define TANDEM_HOST_DEVICE
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TANDEM_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define TANDEM_ALWAYS_INLINE inline
#endif
