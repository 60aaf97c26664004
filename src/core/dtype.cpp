#include "core/dtype.h"

#include <bit>
#include <cfenv>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace hetrec {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::f8e4m3: return 1;
    case DType::f8e5m2: return 1;
    case DType::f64: return 8;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::u8: return 1;
  }
  throw InternalError("dtype_size: unknown dtype");
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "fp32";
    case DType::f16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::f8e4m3: return "fp8_e4m3";
    case DType::f8e5m2: return "fp8_e5m2";
    case DType::f64: return "fp64";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::u8: return "uint8";
  }
  throw InternalError("dtype_name: unknown dtype");
}

DType parse_dtype(std::string_view name, std::string_view key) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f8e4m3, DType::f8e5m2, DType::f64,
                  DType::i32, DType::i64, DType::u8})
    if (dtype_name(t) == name) return t;
  throw ConfigError("config key '" + std::string(key) + "': unknown dtype '" + std::string(name) +
                    "', expected one of fp32, fp16, bf16, fp8_e4m3, fp8_e5m2");
}

bool is_float(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f8e4m3 ||
         t == DType::f8e5m2 || t == DType::f64;
}

namespace {

// A small binary floating-point format: `exp_bits` exponent bits with IEEE bias,
// `man_bits` stored mantissa bits.
struct SmallFloat {
  int exp_bits;
  int man_bits;
  bool has_inf;          // IEEE-like infinities; otherwise overflow saturates
  double max_finite;     // largest finite magnitude
  uint32_t nan_pattern;  // bits (without sign) used for NaN
  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  int emin() const { return 1 - bias(); }
};

constexpr SmallFloat kF16{5, 10, true, 65504.0, 0x7E00};
constexpr SmallFloat kE4M3{4, 3, false, 448.0, 0x7F};
constexpr SmallFloat kE5M2{5, 2, true, 57344.0, 0x7E};

uint32_t encode_magnitude(const SmallFloat& f, double value) {
  // value is a non-negative multiple of the format's quantum at its exponent.
  if (value == 0.0) return 0;
  const double min_normal = std::ldexp(1.0, f.emin());
  if (value < min_normal) {
    const double man = value / std::ldexp(1.0, f.emin() - f.man_bits);
    return static_cast<uint32_t>(man);  // exponent field 0: subnormal
  }
  int k = 0;
  const double frac = std::frexp(value, &k);  // value = frac * 2^k, frac in [0.5, 1)
  const int e = k - 1;
  const double man = (frac * 2.0 - 1.0) * std::ldexp(1.0, f.man_bits);
  const uint32_t exp_field = static_cast<uint32_t>(e + f.bias());
  return (exp_field << f.man_bits) | static_cast<uint32_t>(man);
}

// Rounds |x| to the format; `random` < 0 selects round-to-nearest-even, otherwise it is
// a uniform draw in [0, 1) for stochastic rounding.
uint32_t encode(const SmallFloat& f, float x, double random) {
  const int total_bits = 1 + f.exp_bits + f.man_bits;
  const uint32_t sign = std::signbit(x) ? (1u << (total_bits - 1)) : 0u;
  if (std::isnan(x)) return sign | f.nan_pattern;
  const uint32_t inf_bits = ((1u << f.exp_bits) - 1) << f.man_bits;
  double a = std::fabs(static_cast<double>(x));
  if (std::isinf(x)) return f.has_inf ? (sign | inf_bits) : (sign | encode_magnitude(f, f.max_finite));
  if (a == 0.0) return sign;
  int k = 0;
  std::frexp(a, &k);
  const int e = std::max(k - 1, f.emin());
  const double quantum = std::ldexp(1.0, e - f.man_bits);
  const double scaled = a / quantum;  // exact: a has 24 significant bits
  double rounded;
  if (random < 0.0) {
    rounded = std::nearbyint(scaled);  // default FE_TONEAREST: ties to even
  } else {
    rounded = std::floor(scaled + random);
  }
  double value = rounded * quantum;
  if (value > f.max_finite) {
    // Round-to-nearest overflows to infinity only past max + half an ulp (IEEE); below
    // that the value already rounded back to max. Stochastic rounding never goes past max.
    const double half_ulp = std::ldexp(1.0, static_cast<int>(std::floor(std::log2(f.max_finite))) - f.man_bits - 1);
    if (f.has_inf && random < 0.0 && a >= f.max_finite + half_ulp) return sign | inf_bits;
    value = f.max_finite;
  }
  return sign | encode_magnitude(f, value);
}

float decode(const SmallFloat& f, uint32_t bits) {
  const int total_bits = 1 + f.exp_bits + f.man_bits;
  const bool neg = (bits >> (total_bits - 1)) & 1u;
  const uint32_t exp_field = (bits >> f.man_bits) & ((1u << f.exp_bits) - 1);
  const uint32_t man = bits & ((1u << f.man_bits) - 1);
  double v;
  const uint32_t exp_max = (1u << f.exp_bits) - 1;
  if (f.has_inf && exp_field == exp_max) {
    v = man == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!f.has_inf && exp_field == exp_max && man == ((1u << f.man_bits) - 1)) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (exp_field == 0) {
    v = std::ldexp(static_cast<double>(man), f.emin() - f.man_bits);
  } else {
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(man), -f.man_bits),
                   static_cast<int>(exp_field) - f.bias());
  }
  return static_cast<float>(neg ? -v : v);
}

double unit(uint32_t random) { return static_cast<double>(random) * 0x1.0p-32; }

}  // namespace

uint16_t f32_to_f16(float x) { return static_cast<uint16_t>(encode(kF16, x, -1.0)); }
uint16_t f32_to_f16_sr(float x, uint32_t r) { return static_cast<uint16_t>(encode(kF16, x, unit(r))); }
float f16_to_f32(uint16_t h) { return decode(kF16, h); }

// bf16 is the top half of fp32, so both roundings are integer operations on the bits.
uint16_t f32_to_bf16(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x0040);  // keep it a quiet NaN
  const uint32_t rounded = u + 0x7FFFu + ((u >> 16) & 1u);               // ties to even
  return static_cast<uint16_t>(rounded >> 16);
}
uint16_t f32_to_bf16_sr(float x, uint32_t r) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  if (std::isnan(x) || std::isinf(x)) return f32_to_bf16(x);
  const uint32_t rounded = u + (r >> 16);  // add 16 random bits below the kept mantissa
  uint16_t out = static_cast<uint16_t>(rounded >> 16);
  if ((out & 0x7F80u) == 0x7F80u) out = static_cast<uint16_t>((out & 0x8000u) | 0x7F7Fu);  // stay finite
  return out;
}
float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint8_t f32_to_f8e4m3(float x) { return static_cast<uint8_t>(encode(kE4M3, x, -1.0)); }
uint8_t f32_to_f8e4m3_sr(float x, uint32_t r) { return static_cast<uint8_t>(encode(kE4M3, x, unit(r))); }
float f8e4m3_to_f32(uint8_t v) { return decode(kE4M3, v); }

uint8_t f32_to_f8e5m2(float x) { return static_cast<uint8_t>(encode(kE5M2, x, -1.0)); }
uint8_t f32_to_f8e5m2_sr(float x, uint32_t r) { return static_cast<uint8_t>(encode(kE5M2, x, unit(r))); }
float f8e5m2_to_f32(uint8_t v) { return decode(kE5M2, v); }

float load_as_f32(const void* base, std::size_t i, DType t) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(base)[i];
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case DType::f8e4m3: return f8e4m3_to_f32(static_cast<const uint8_t*>(base)[i]);
    case DType::f8e5m2: return f8e5m2_to_f32(static_cast<const uint8_t*>(base)[i]);
    case DType::f64: return static_cast<float>(static_cast<const double*>(base)[i]);
    default: throw InternalError("load_as_f32: not a float dtype: " + std::string(dtype_name(t)));
  }
}

void store_from_f32(void* base, std::size_t i, DType t, float v, bool stochastic, uint32_t r) {
  switch (t) {
    case DType::f32: static_cast<float*>(base)[i] = v; return;
    case DType::f16:
      static_cast<uint16_t*>(base)[i] = stochastic ? f32_to_f16_sr(v, r) : f32_to_f16(v);
      return;
    case DType::bf16:
      static_cast<uint16_t*>(base)[i] = stochastic ? f32_to_bf16_sr(v, r) : f32_to_bf16(v);
      return;
    case DType::f8e4m3:
      static_cast<uint8_t*>(base)[i] = stochastic ? f32_to_f8e4m3_sr(v, r) : f32_to_f8e4m3(v);
      return;
    case DType::f8e5m2:
      static_cast<uint8_t*>(base)[i] = stochastic ? f32_to_f8e5m2_sr(v, r) : f32_to_f8e5m2(v);
      return;
    case DType::f64: static_cast<double*>(base)[i] = v; return;
    default: throw InternalError("store_from_f32: not a float dtype: " + std::string(dtype_name(t)));
  }
}

}  // namespace hetrec
