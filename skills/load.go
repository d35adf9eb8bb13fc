package skills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxLinkHops bounds a chain of symbolic links.
const maxLinkHops = 8

// LoadFS builds a Set from a file tree: every directory below the root
// that holds a SKILL.md is a skill whose path is the directory's, and its
// files are every regular file below it (those of nested skills
// included). Names starting with "." are skipped, and so are files in no
// skill. A symbolic link is followed only when fsys can tell where it
// points (fs.ReadLinkFS, as os.DirFS and os.Root do) and it stays inside
// the tree; a link out of the tree, to a directory, or that cannot be
// checked is an error, and so is a file over Options.MaxFileBytes (it is
// not read). Every problem is reported at once.
func LoadFS(fsys fs.FS, opts Options) (*Set, error) {
	return loadFS(fsys, opts, "")
}

// loadFS loads fsys with every path under prefix (none when empty; then
// the root may not be a skill).
func loadFS(fsys fs.FS, opts Options, prefix string) (*Set, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	l := &loader{fsys: fsys, opts: opts, files: map[string][]byte{}}
	if err := fs.WalkDir(fsys, ".", l.visit); err != nil {
		l.errs = append(l.errs, err)
	}
	if _, ok := l.files[ManifestName]; ok && prefix == "" {
		l.errs = append(l.errs, errors.New("the root itself holds a SKILL.md: load the directory above it (a skill's path is its directory's)"))
	}
	if err := errors.Join(l.errs...); err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	files := l.files
	if prefix != "" {
		files = make(map[string][]byte, len(l.files))
		for p, b := range l.files {
			files[prefix+"/"+p] = b
		}
	}
	return build(opts, files)
}

// LoadDir is LoadFS over the directory dir, opened as an os.Root so that
// no read leaves it. When dir itself holds a SKILL.md, it is the one
// skill of the Set, at the path of its base name.
func LoadDir(dir string, opts Options) (*Set, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	defer root.Close()
	if _, err := root.Stat(ManifestName); err == nil {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("skills: %w", err)
		}
		name := filepath.Base(abs)
		if err := checkPath(name); err != nil {
			return nil, fmt.Errorf("skills: %w", err)
		}
		return loadFS(root.FS(), opts, name)
	}
	return LoadFS(root.FS(), opts)
}

type loader struct {
	fsys  fs.FS
	opts  Options
	files map[string][]byte
	total int64
	errs  []error
}

func (l *loader) visit(p string, d fs.DirEntry, err error) error {
	if err != nil {
		l.errs = append(l.errs, err)
		if d != nil && d.IsDir() {
			return fs.SkipDir
		}
		return nil
	}
	if p != "." && strings.HasPrefix(d.Name(), ".") {
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	}
	switch {
	case d.IsDir():
		return nil
	case d.Type()&fs.ModeSymlink != 0:
		target, err := resolveLink(l.fsys, p)
		if err != nil {
			l.errs = append(l.errs, err)
			return nil
		}
		l.read(p, target)
	case d.Type().IsRegular():
		l.read(p, p)
	default:
		l.errs = append(l.errs, fmt.Errorf("%s is not a regular file", p))
	}
	return nil
}

// read reads the regular file at name as the file p, within the bounds.
func (l *loader) read(p, name string) {
	if err := checkPath(p); err != nil {
		l.errs = append(l.errs, err)
		return
	}
	f, err := l.fsys.Open(name)
	if err != nil {
		l.errs = append(l.errs, err)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	switch {
	case err != nil:
		l.errs = append(l.errs, err)
		return
	case !info.Mode().IsRegular():
		l.errs = append(l.errs, fmt.Errorf("%s is not a regular file", p))
		return
	case info.Size() > l.opts.MaxFileBytes:
		l.errs = append(l.errs, fmt.Errorf("file %s has %d bytes, more than MaxFileBytes (%d)", p, info.Size(), l.opts.MaxFileBytes))
		return
	case l.total+info.Size() > l.opts.MaxTotalBytes:
		l.errs = append(l.errs, fmt.Errorf("file %s: the tree holds more than MaxTotalBytes (%d)", p, l.opts.MaxTotalBytes))
		return
	}
	b, err := io.ReadAll(io.LimitReader(f, l.opts.MaxFileBytes+1))
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("read %s: %w", p, err))
		return
	}
	if int64(len(b)) > l.opts.MaxFileBytes {
		l.errs = append(l.errs, fmt.Errorf("file %s grew past MaxFileBytes (%d) while read", p, l.opts.MaxFileBytes))
		return
	}
	l.total += int64(len(b))
	l.files[p] = b
}

// resolveLink follows the symbolic link at p to a name inside fsys that is
// no link, refusing a target outside the tree, a link through a linked
// directory, and a tree that cannot say where links point.
func resolveLink(fsys fs.FS, p string) (string, error) {
	rl, ok := fsys.(fs.ReadLinkFS)
	if !ok {
		return "", fmt.Errorf("%s is a symbolic link and this file system cannot tell where it points", p)
	}
	name := p
	for range maxLinkHops {
		target, err := rl.ReadLink(name)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		if path.IsAbs(target) || filepath.IsAbs(target) {
			return "", fmt.Errorf("%s is a symbolic link out of the skills directory (to an absolute path)", p)
		}
		next := path.Join(path.Dir(name), filepath.ToSlash(target))
		if next == ".." || strings.HasPrefix(next, "../") {
			return "", fmt.Errorf("%s is a symbolic link out of the skills directory", p)
		}
		if err := noLinkedDirs(rl, next); err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		info, err := rl.Lstat(next)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			if info.IsDir() {
				return "", fmt.Errorf("%s is a symbolic link to a directory, which is not followed", p)
			}
			return next, nil
		}
		name = next
	}
	return "", fmt.Errorf("%s: more than %d symbolic links in a chain", p, maxLinkHops)
}

// noLinkedDirs refuses a name one of whose directories is a link.
func noLinkedDirs(rl fs.ReadLinkFS, name string) error {
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		info, err := rl.Lstat(d)
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("the link target passes through the linked directory %s", d)
		}
	}
	return nil
}
