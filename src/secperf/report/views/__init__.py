"""Row models of the connect and handshake tables, shared by the terminal and the HTML report."""
