package remote

import "syscall"

// setPdeathsig makes the kernel kill the transport program when this process dies, so
// no ssh outlives a ptyhub killed with SIGKILL.
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
