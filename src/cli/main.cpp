#include "cli/commands.hpp"

int main(int argc, char** argv) { return gpudoc::cli::run(argc, argv); }
