package reaper

// fdDir lists this process's open descriptors.
const fdDir = "/proc/self/fd"

// selfExe names the running binary through the kernel's link to it: it works when the
// file was deleted or replaced since this process started (go run, go install of a new
// build), where the path os.Executable names would be gone or another build.
func selfExe() string { return "/proc/self/exe" }
