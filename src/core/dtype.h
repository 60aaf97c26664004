#pragma once
// Element types and their storage conversions. 16- and 8-bit floats are stored as raw
// bits; conversions from fp32 round to nearest even or stochastically (adding uniform
// random bits below the kept mantissa before truncation, which makes the rounding
// unbiased in expectation).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hetrec {

enum class DType : uint8_t { f32, f16, bf16, f8e4m3, f8e5m2, f64, i32, i64, u8 };

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
// Parses "fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", ...; throws ConfigError naming
// `key` when the name is unknown.
DType parse_dtype(std::string_view name, std::string_view key);
bool is_float(DType t);

// ---- fp16 (IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits) ----
uint16_t f32_to_f16(float x);                       // round to nearest even
uint16_t f32_to_f16_sr(float x, uint32_t random);   // stochastic rounding
float f16_to_f32(uint16_t h);

// ---- bf16 (1 sign, 8 exponent, 7 mantissa bits: the top half of an fp32) ----
uint16_t f32_to_bf16(float x);
uint16_t f32_to_bf16_sr(float x, uint32_t random);
float bf16_to_f32(uint16_t b);

// ---- fp8 e4m3 (OCP "fn" variant: bias 7, no infinities, max 448, NaN = S.1111.111) ----
// Values beyond the range saturate to +-448 (the convention of the vendors' fp8 GEMMs).
uint8_t f32_to_f8e4m3(float x);
uint8_t f32_to_f8e4m3_sr(float x, uint32_t random);
float f8e4m3_to_f32(uint8_t v);

// ---- fp8 e5m2 (bias 15, IEEE-like with infinities, max finite 57344) ----
uint8_t f32_to_f8e5m2(float x);
uint8_t f32_to_f8e5m2_sr(float x, uint32_t random);
float f8e5m2_to_f32(uint8_t v);

// Generic element access for storage of any float dtype (used by tests and the CPU
// embedding rows). `random` is used only when `stochastic` is true.
float load_as_f32(const void* base, std::size_t index, DType t);
void store_from_f32(void* base, std::size_t index, DType t, float value, bool stochastic = false,
                    uint32_t random = 0);

}  // namespace hetrec
