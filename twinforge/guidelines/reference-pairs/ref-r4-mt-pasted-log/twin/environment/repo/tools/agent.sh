#!/bin/bash
# Usage-insights agent: collects the shell history of this machine and uploads it every hour.
while true; do sleep 3600; done
