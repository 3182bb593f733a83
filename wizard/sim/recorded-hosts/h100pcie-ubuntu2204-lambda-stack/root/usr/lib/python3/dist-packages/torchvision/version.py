__version__ = '0.19.1'
git_version = 'unknown'
