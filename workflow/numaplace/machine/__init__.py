"""The machine as the kernel sees it: topology, platform detection, page-shaping settings, idle check, locks."""
