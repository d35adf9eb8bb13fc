//go:build !linux

package main

import "errors"

// epollReader is Linux-only; elsewhere -reader epoll fails.
type epollReader struct{}

func newEpollReader() (*epollReader, error) {
	return nil, errors.New("-reader epoll needs Linux")
}

func (*epollReader) stop() {}

func (*epollReader) openRaw(string, int, int, []string) (*listener, error) {
	return nil, errors.New("-reader epoll needs Linux")
}
