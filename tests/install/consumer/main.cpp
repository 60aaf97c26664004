// Loads an installed hardware description and the installed demo config through the
// installed libraries, and prints the description and the demo model's signature.
#include <cstdio>
#include <string>

#include "hw/hardware.h"
#include "train/checkpoint.h"
#include "train/config.h"

int main() {
  const std::string data = HETREC_DATA_DIR;
  const hetrec::Hardware hw = hetrec::load_hardware_by_name("h200_sxm", data + "/hw");
  const hetrec::RunConfig demo = hetrec::load_run_config(data + "/configs/demo.toml");
  std::printf("%s: %s\n%s\n", hw.name.c_str(), hw.display_name.c_str(), hetrec::model_signature(demo.model).c_str());
  return 0;
}
