#pragma once
// Writes NumPy .npy arrays and .npz (ZIP) archives byte by byte, as numpy.save,
// numpy.savez (stored members) and numpy.savez_compressed (deflated members) lay them
// out, and days of the MLPerf DLRM-DCNv2 multi-hot dataset (day_N_dense.npy,
// day_N_labels.npy, day_N_sparse_multi_hot.npz). Written independently of the reader
// under test (src/data/npy_format.*, npz_archive.*), from the formats' documents:
// numpy.lib.format and PKWARE's APPNOTE.TXT. Needs zlib.
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace hetrec::testing::npy {

// The MLPerf DLRM-DCNv2 multi-hot sizes of the 26 Criteo tables (TorchRec's
// materialize_synthetic_multihot_dataset.py --multi_hot_sizes, as the MLPerf training
// reference runs it).
inline const std::vector<int> kMlperfHotness = {3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1,
                                                6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1};

inline void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// A .npy stream: version `major`.0, the dict as numpy writes it, padded to 64 bytes.
inline std::string npy(const std::string& descr, const std::vector<int64_t>& shape, const void* data,
                       std::size_t bytes, int major = 1, bool fortran = false) {
  std::string shape_text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) shape_text += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) shape_text += ",";
  shape_text += ")";
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                     ", 'shape': " + shape_text + ", }";
  const std::size_t preamble = major == 1 ? 10 : 12;
  while ((preamble + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  put_le(out, dict.size(), major == 1 ? 2 : 4);
  out += dict;
  out.append(static_cast<const char*>(data), bytes);
  return out;
}

template <class T>
std::string npy_of(const std::string& descr, const std::vector<int64_t>& shape, const std::vector<T>& values,
                   int major = 1) {
  return npy(descr, shape, values.data(), values.size() * sizeof(T), major);
}

inline std::string deflate_raw(const std::string& in) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  std::string out(deflateBound(&zs, static_cast<uLong>(in.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

struct ZipMember {
  std::string name;
  std::string data;  // uncompressed
  bool deflate = false;
};

// A ZIP archive of `members`. With `zip64` every size and offset in the central
// directory is the 0xffffffff marker with the values in a ZIP64 extra field, and ZIP64
// end records precede the classic one (as Python's zipfile writes members over 4 GiB).
inline std::string zip(const std::vector<ZipMember>& members, bool zip64 = false) {
  std::string out, cd;
  for (const ZipMember& m : members) {
    const std::string body = m.deflate ? deflate_raw(m.data) : m.data;
    const auto crc = static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(m.data.data()),
                                                 static_cast<uInt>(m.data.size())));
    const uint64_t offset = out.size();
    const uint16_t method = m.deflate ? 8 : 0;
    std::string extra;
    if (zip64) {
      put_le(extra, 0x0001, 2);
      put_le(extra, 16, 2);
      put_le(extra, m.data.size(), 8);
      put_le(extra, body.size(), 8);
    }
    // Local header (APPNOTE 4.3.7).
    put_le(out, 0x04034b50, 4);
    put_le(out, zip64 ? 45 : 20, 2);
    put_le(out, 0, 2);
    put_le(out, method, 2);
    put_le(out, 0, 4);  // time, date
    put_le(out, crc, 4);
    put_le(out, zip64 ? 0xffffffffu : body.size(), 4);
    put_le(out, zip64 ? 0xffffffffu : m.data.size(), 4);
    put_le(out, m.name.size(), 2);
    put_le(out, extra.size(), 2);
    out += m.name + extra + body;
    // Central directory header (APPNOTE 4.3.12).
    std::string cextra;
    if (zip64) {
      put_le(cextra, 0x0001, 2);
      put_le(cextra, 24, 2);
      put_le(cextra, m.data.size(), 8);
      put_le(cextra, body.size(), 8);
      put_le(cextra, offset, 8);
    }
    put_le(cd, 0x02014b50, 4);
    put_le(cd, zip64 ? 45 : 20, 2);
    put_le(cd, zip64 ? 45 : 20, 2);
    put_le(cd, 0, 2);
    put_le(cd, method, 2);
    put_le(cd, 0, 4);
    put_le(cd, crc, 4);
    put_le(cd, zip64 ? 0xffffffffu : body.size(), 4);
    put_le(cd, zip64 ? 0xffffffffu : m.data.size(), 4);
    put_le(cd, m.name.size(), 2);
    put_le(cd, cextra.size(), 2);
    put_le(cd, 0, 2);  // comment
    put_le(cd, 0, 2);  // disk
    put_le(cd, 0, 2);  // internal attributes
    put_le(cd, 0, 4);  // external attributes
    put_le(cd, zip64 ? 0xffffffffu : offset, 4);
    cd += m.name + cextra;
  }
  const uint64_t cd_offset = out.size();
  out += cd;
  if (zip64) {
    const uint64_t z = out.size();
    put_le(out, 0x06064b50, 4);
    put_le(out, 44, 8);
    put_le(out, 45, 2);
    put_le(out, 45, 2);
    put_le(out, 0, 4);
    put_le(out, 0, 4);
    put_le(out, members.size(), 8);
    put_le(out, members.size(), 8);
    put_le(out, cd.size(), 8);
    put_le(out, cd_offset, 8);
    put_le(out, 0x07064b50, 4);
    put_le(out, 0, 4);
    put_le(out, z, 8);
    put_le(out, 1, 4);
  }
  put_le(out, 0x06054b50, 4);
  put_le(out, 0, 2);
  put_le(out, 0, 2);
  put_le(out, zip64 ? 0xffff : members.size(), 2);
  put_le(out, zip64 ? 0xffff : members.size(), 2);
  put_le(out, zip64 ? 0xffffffffu : cd.size(), 4);
  put_le(out, zip64 ? 0xffffffffu : cd_offset, 4);
  put_le(out, 0, 2);
  return out;
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

// One day of the MLPerf layout, in memory.
struct Day {
  int64_t samples = 0;
  int num_dense = 13;
  std::vector<float> dense;                // samples x num_dense
  std::vector<int32_t> labels;             // samples
  std::vector<int> hotness;                // per table
  std::vector<std::vector<int64_t>> ids;   // per table: samples x hotness, row-major
};

inline uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Dense values log(x + 1) of small counts, labels 0/1, ids uniform in [0, rows_t).
inline Day make_day(uint64_t seed, int64_t samples, const std::vector<int64_t>& rows,
                    const std::vector<int>& hotness = kMlperfHotness, int num_dense = 13) {
  Day d;
  d.samples = samples;
  d.num_dense = num_dense;
  d.hotness = hotness;
  uint64_t s = seed;
  for (int64_t i = 0; i < samples * num_dense; ++i)
    d.dense.push_back(std::log(static_cast<float>(splitmix(s) % 1000) + 1.0f));
  for (int64_t i = 0; i < samples; ++i) d.labels.push_back(static_cast<int32_t>(splitmix(s) % 4 == 0));
  for (std::size_t t = 0; t < rows.size(); ++t) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < samples * hotness[t]; ++i) v.push_back(static_cast<int64_t>(splitmix(s) % rows[t]));
    d.ids.push_back(std::move(v));
  }
  return d;
}

struct DayOptions {
  std::string sparse_descr = "<i4";  // or "<i8"
  std::string label_descr = "<i4";   // "<i4", "<f4", "|u1", ...
  bool labels_2d = true;             // [samples, 1] as TorchRec writes them, else [samples]
  std::set<int> deflate;             // members written deflated
  bool zip64 = false;
  int npy_major = 1;
  std::set<int> skip_members;        // members left out
};

inline std::string label_bytes(const Day& d, const std::string& descr) {
  std::string out;
  for (int32_t y : d.labels) {
    if (descr == "<i4") put_le(out, static_cast<uint32_t>(y), 4);
    else if (descr == "<i8") put_le(out, static_cast<uint64_t>(y), 8);
    else if (descr == "|u1" || descr == "|b1") out += static_cast<char>(y);
    else if (descr == "<f4") {
      const float f = static_cast<float>(y);
      out.append(reinterpret_cast<const char*>(&f), 4);
    } else throw std::runtime_error("label descr " + descr);
  }
  return out;
}

inline std::string table_npy(const Day& d, std::size_t t, const std::string& descr, int major = 1) {
  std::string raw;
  for (int64_t id : d.ids[t]) put_le(raw, static_cast<uint64_t>(id), descr == "<i8" ? 8 : 4);
  return npy(descr, {d.samples, d.hotness[t]}, raw.data(), raw.size(), major);
}

// Writes prefix_dense.npy, prefix_labels.npy and prefix_sparse_multi_hot.npz.
inline void write_day(const std::string& prefix, const Day& d, const DayOptions& o = {}) {
  write_file(prefix + "_dense.npy", npy("<f4", {d.samples, d.num_dense}, d.dense.data(), d.dense.size() * 4,
                                        o.npy_major));
  const std::string labels = label_bytes(d, o.label_descr);
  write_file(prefix + "_labels.npy",
             npy(o.label_descr, o.labels_2d ? std::vector<int64_t>{d.samples, 1} : std::vector<int64_t>{d.samples},
                 labels.data(), labels.size(), o.npy_major));
  std::vector<ZipMember> members;
  for (std::size_t t = 0; t < d.ids.size(); ++t) {
    if (o.skip_members.count(static_cast<int>(t))) continue;
    members.push_back({std::to_string(t) + ".npy", table_npy(d, t, o.sparse_descr, o.npy_major),
                       o.deflate.count(static_cast<int>(t)) > 0});
  }
  write_file(prefix + "_sparse_multi_hot.npz", zip(members, o.zip64));
}

}  // namespace hetrec::testing::npy
