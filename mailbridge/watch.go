package mailbridge

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// newWatcher returns a file-system watcher for the inboxes directory, or nil
// when the watch is disabled or unavailable (the poll then works alone).
func (b *Bridge) newWatcher() *fsnotify.Watcher {
	if b.cfg.DisableWatch {
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		b.log.Warn("no file-system watch; polling only", "interval", b.cfg.PollInterval, "err", err)
		return nil
	}
	b.ensureWatch(w)
	return w
}

// ensureWatch makes w watch the inboxes directory. The directory is watched
// rather than the inbox files because every write replaces an inbox file by
// a rename or an exchange. When the directory does not exist yet the team
// directory is watched so that its creation is seen; when neither exists the
// next poll tries again. It reports whether the inboxes directory was newly
// added.
func (b *Bridge) ensureWatch(w *fsnotify.Watcher) bool {
	if slices.Contains(w.WatchList(), b.inboxDir) {
		b.watching.Store(true)
		return false
	}
	b.watching.Store(false)
	err := w.Add(b.inboxDir)
	if err == nil {
		b.log.Debug("watching inboxes", "dir", b.inboxDir)
		b.watching.Store(true)
		return true
	}
	if !slices.Contains(w.WatchList(), b.teamDir) {
		if err2 := w.Add(b.teamDir); err2 != nil {
			b.log.Debug("cannot watch the team yet; polling", "dir", b.teamDir, "err", errors.Join(err, err2))
		}
	}
	return false
}

// loop runs the poll ticker and the file-system watch until the bridge
// closes. It owns w and closes it.
func (b *Bridge) loop(w *fsnotify.Watcher) {
	defer b.wg.Done()
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w != nil {
		defer w.Close()
		events, errs = w.Events, w.Errors
	}
	tick := time.NewTicker(b.cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-tick.C:
			if w != nil && b.ensureWatch(w) {
				b.log.Debug("inboxes directory appeared")
				b.kickAll()
				continue
			}
			b.kickPoll()
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			b.onEvent(w, ev)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// Events may have been dropped (an overflow says so): check
			// everything, and let Idle read again.
			b.log.Warn("file-system watch error", "err", err)
			b.kickAll()
		}
	}
}

// onEvent turns one file-system event into checks: a change of
// inboxes/{identity}.json asks for a check of identity; the inboxes
// directory appearing or going away re-arms the watch and checks everyone.
func (b *Bridge) onEvent(w *fsnotify.Watcher, ev fsnotify.Event) {
	if ev.Op == fsnotify.Chmod {
		return
	}
	name := filepath.Clean(ev.Name)
	if name == b.inboxDir {
		b.forgetQuiet() // the directory changed: trust no earlier read
		if b.ensureWatch(w) {
			b.kickAll()
		}
		return
	}
	if filepath.Dir(name) != b.inboxDir {
		return
	}
	if id, ok := strings.CutSuffix(filepath.Base(name), ".json"); ok {
		b.kickIdentity(id)
	}
}
