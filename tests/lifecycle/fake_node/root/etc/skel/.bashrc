# ~/.bashrc of new users
