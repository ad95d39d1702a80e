// Writes every file of the dashboard as the gpudoc binary embeds it (view::dashboard_asset) into a
// folder, with manifest.tsv (`PATH<TAB>CONTENT-TYPE<TAB>FILE` a line), for dashboard_mock_server.py
// to serve: the browser test then runs the exact bytes and content types that `gpudoc serve` sends.
//   dump_dashboard_assets DIR     exit 0; 2 for usage; 3 when a file cannot be written or is missing
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "view/dashboard_assets.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: dump_dashboard_assets DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::ofstream manifest(dir / "manifest.tsv");
  int n = 0;
  for (std::string_view path : gpudoc::view::dashboard_paths()) {
    auto asset = gpudoc::view::dashboard_asset(path);
    if (!asset) {
      std::fprintf(stderr, "dump_dashboard_assets: %.*s is not embedded in this build\n", static_cast<int>(path.size()),
                   path.data());
      return 3;
    }
    const std::string file = "asset" + std::to_string(n++);
    std::ofstream out(dir / file, std::ios::binary);
    out.write(asset->body.data(), static_cast<std::streamsize>(asset->body.size()));
    manifest << path << '\t' << asset->content_type << '\t' << file << '\n';
    if (!out) {
      std::fprintf(stderr, "dump_dashboard_assets: cannot write %s\n", (dir / file).c_str());
      return 3;
    }
  }
  manifest.flush();
  if (!manifest) {
    std::fprintf(stderr, "dump_dashboard_assets: cannot write %s\n", (dir / "manifest.tsv").c_str());
    return 3;
  }
  return 0;
}
