module github.com/taskwire/taskwire

go 1.26
