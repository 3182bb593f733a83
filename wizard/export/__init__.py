"""Exports of the chosen setup, each rendered from the one resolved plan: deploy script,
Dockerfile, answers file, Ansible playbook and cloud-init user-data. Pure functions of an
``ExportSource``; writing the files is the front ends' job."""
