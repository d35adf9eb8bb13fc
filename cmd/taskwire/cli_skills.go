package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/taskwire/taskwire/internal/cliflags"
	"github.com/taskwire/taskwire/skills"
)

const skillsSynopsis = "usage: taskwire skills list [flags]\n" +
	"       taskwire skills get [flags] URI\n\n" +
	"list prints the skills the server lists (Skills extension): name, SKILL.md URI,\n" +
	"files and bytes, and description; it reads none of their files.\n" +
	"get loads the skill whose SKILL.md is at URI and prints its SKILL.md, or with\n" +
	"--file PATH one of its files, each verified against the skill's entry (size,\n" +
	"digest and front matter); content that fails is not printed. --json prints the\n" +
	"entry (list: every entry) instead, reading no file."

// skillsCmd runs `taskwire skills list|get`.
func skillsCmd(ctx context.Context, args []string, env *cliEnv) error {
	var cf clientFlags
	fs := newClientFlagSet("skills", skillsSynopsis, &cf)
	file := fs.String("file", "", "with get: print the skill's file at `PATH` (relative to the skill's root) instead of SKILL.md")
	pos, err := parseInterleaved(fs, args, env.stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("skills: a subcommand is required: list or get")
	}
	switch {
	case pos[0] == "list" && len(pos) == 1 && *file == "":
	case pos[0] == "get" && len(pos) == 2:
	case pos[0] == "list":
		return usageErrorf("skills list: unexpected arguments or --file")
	case pos[0] == "get":
		return usageErrorf("skills get: exactly one URI is required")
	default:
		return usageErrorf("skills: unknown subcommand %q (want list or get)", pos[0])
	}
	ctx, s, stop, err := cf.openBounded(ctx, env)
	if err != nil {
		return err
	}
	defer stop()
	if pos[0] == "list" {
		entries, err := s.c.ListSkills(ctx)
		if err != nil {
			return s.fail(err)
		}
		if cf.json {
			return printJSON(env.stdout, entries)
		}
		return printSkills(env.stdout, entries)
	}
	entry, err := s.c.GetSkill(ctx, pos[1])
	if err != nil {
		return s.fail(err)
	}
	if cf.json {
		return printJSON(env.stdout, entry)
	}
	loaded, err := s.c.LoadSkill(ctx, entry)
	if err != nil {
		return s.fail(err)
	}
	content := loaded.Manifest
	if *file != "" {
		if content, err = loaded.Read(ctx, *file); err != nil {
			return s.fail(err)
		}
	}
	_, err = env.stdout.Write(content)
	return err
}

// printSkills writes one line per skill.
func printSkills(w io.Writer, entries []*skills.Entry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range entries {
		files := "dynamic"
		if !e.Resources.Dynamic {
			var n int64
			for _, r := range e.Resources.Files {
				n += r.Size
			}
			files = fmt.Sprintf("%d files, %d bytes", len(e.Resources.Files), n)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cliflags.OneLine(e.Name(), 100), cliflags.OneLine(e.URI, 500), files, cliflags.OneLine(e.Description(), 300))
	}
	return tw.Flush()
}
