#!/usr/bin/env sh
# Prints a greeting; the hello-world skill points the model here.
who="${1:-world}"
echo "Hello, ${who}!"
