// Package hostrun runs package workspace's commands on another host, over
// that host's ssh connection (codexchild/sshhost): it is the
// workspace.Runner of a host's worktrees, so that git, the setup command,
// the merge check and the file operations of a worktree there run there.
//
// It is its own package because two parts need it: serve, for the places
// of the agents it starts on a host, and the worktrees command, which
// lists and prunes the worktrees of a team's agents on the hosts where
// they were made. workspace itself knows nothing of ssh (its Runner is
// the seam), and sshhost nothing of worktrees.
package hostrun
