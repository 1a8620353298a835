"""A RHEL 9 host twin that real Ansible drives (see README.md)."""
